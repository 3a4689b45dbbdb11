"""Model data: the builder, Model/State/Control/Contacts, and shape and joint kinds. Knows nothing of USD or MuJoCo."""

from .builder import Mesh, ModelBuilder
from .model import Contacts, Control, Model, State
from .types import DriveMode, GeoType, JointType

__all__ = ["Contacts", "Control", "DriveMode", "GeoType", "JointType", "Mesh", "Model", "ModelBuilder", "State"]
