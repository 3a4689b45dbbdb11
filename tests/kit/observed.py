"""What a Kit driver saw, as JSON for the pytest side (tests/test_kit.py)."""

import json
import traceback


class Observed(dict):
    """A dict saved to ``path``; :meth:`run` saves it after ``main()``, or with the traceback if it fails."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def save(self):
        with open(self.path, "w") as f:
            json.dump(self, f, indent=1)

    def run(self, main):
        try:
            main()
        except BaseException:
            self["exception"] = traceback.format_exc()
            self.save()
            raise
