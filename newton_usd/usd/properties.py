"""The catalog of properties newton_usd resolves, per prim kind, with their attributes in each dialect (the conversions
to SI they name: :mod:`~newton_usd.usd.conversions`).

Each entry is a :class:`~newton_usd.usd.resolver.Property`; the importer resolves them through a
:class:`~newton_usd.usd.resolver.Resolver`. Conventions of the sources, converted here:

- Every dialect's lengths, masses and efforts are in stage units (``metersPerUnit``,
  ``kilogramsPerUnit``; mujoco-usd-converter writes meters and kilograms).
- NewtonJointAPI's angular damping is per degree; ``mjc:damping`` is per radian, as in MuJoCo.
- Joint ``mjc:ref``/``mjc:springref`` follow the scene's ``mjc:compiler:angle`` (degree by default),
  as MJCF does; other ``mjc:*`` angles (limit margins) are radians.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.types import MESH_INERTIA_MODES
from .conversions import (
    _INF_UNSET,
    _NEG_INF_UNSET,
    _NEG_UNSET,
    C,
    _bool,
    _dt_from_rate,
    _effort,
    _float,
    _inertia_like,
    _int,
    _joint_margin,
    _length,
    _mjc_damping,
    _mjc_position,
    _mjc_stiffness,
    _newton_damping,
    _non_negative,
    _positive,
    _solimp,
    _solref,
    _vec,
)
from .resolver import RAD_PER_DEG, Property

# ---------------------------------------------------------------- PhysicsScene
SCENE_TIMESTEP = Property(
    "timestep",
    (
        C("newton", "newton:timeStepsPerSecond", _dt_from_rate),
        C("mjc", "mjc:option:timestep", _float),
        C("physx", "physxScene:timeStepsPerSecond", _dt_from_rate),
    ),
    default=None,
    unit="s",
    check=_positive,
)
SCENE_ITERATIONS = Property(
    "iterations",
    (C("newton", "newton:maxSolverIterations", _int, _NEG_UNSET), C("mjc", "mjc:option:iterations", _int)),
    default=None,
    check=_non_negative,
)
SCENE_GRAVITY_ENABLED = Property(
    "gravity_enabled", (C("newton", "newton:gravityEnabled", _bool), C("mjc", "mjc:flag:gravity", _bool)), default=True
)
# Our own NewtonUsdSceneAPI (runtime settings no upstream schema has).
SOLVER_NAMES = ("mujoco", "xpbd", "featherstone", "semi_implicit", "kamino", "implicit_mpm", "vbd")
"""The solvers ``newton:usd:solver`` names (``newton_usd.solvers.SOLVERS``; a test checks they agree)."""


def _seed_solver(v, ctx):
    """The seed's ``newton:solver`` (euler, xpbd, vbd, ...): "euler" is the semi-implicit solver."""
    return {"euler": "semi_implicit"}.get(str(v), str(v))


SCENE_SOLVER = Property(
    "solver",
    (C("newton", "newton:usd:solver"), C("newton", "newton:solver", _seed_solver)),
    default="mujoco",
    allowed=SOLVER_NAMES,
)
SCENE_BACKEND = Property(
    "mujoco_backend", (C("newton", "newton:usd:mujocoBackend"),), default="auto", allowed=("auto", "cpu", "warp")
)
SCENE_SUBSTEPS = Property("substeps", (C("newton", "newton:usd:substeps", _int),), default=0, check=_non_negative)
SCENE_FPS = Property("frames_per_second", (C("newton", "newton:usd:framesPerSecond", _float),), default=0.0, unit="1/s")
SCENE_COLLIDE_ON_SUBSTEPS = Property(
    "collide_on_substeps", (C("newton", "newton:usd:collideOnSubsteps", _bool),), default=True
)

# Newton's Warp solvers: NewtonXpbdSceneAPI, and the seed's newton:solver:* / newton:* scene attributes.
XPBD_SCENE_API = "NewtonXpbdSceneAPI"
_XPBD = (
    ("soft_body_relaxation", "softBodyRelaxation", _float),
    ("soft_contact_relaxation", "softContactRelaxation", _float),
    ("joint_linear_relaxation", "jointLinearRelaxation", _float),
    ("joint_angular_relaxation", "jointAngularRelaxation", _float),
    ("joint_linear_compliance", "jointLinearCompliance", _float),
    ("joint_angular_compliance", "jointAngularCompliance", _float),
    ("rigid_contact_relaxation", "rigidContactRelaxation", _float),
    ("rigid_contact_con_weighting", "rigidContactConWeighting", _bool),
    ("angular_damping", "angularDamping", _float),
    ("enable_restitution", "restitutionEnabled", _bool),
)
SCENE_NEWTON_SOLVER = tuple(
    Property(
        f"xpbd.{name}",
        (C("newton", f"newton:xpbd:{attr}", convert), C("newton", f"newton:solver:{name}", convert)),
        check=_non_negative if convert is _float else None,
    )
    for name, attr, convert in _XPBD
) + (
    Property(
        "newton.iterations",
        (C("newton", "newton:maxSolverIterations", _int, _NEG_UNSET), C("newton", "newton:solver:iterations", _int)),
        check=_non_negative,
    ),
    Property("newton.angular_damping", (C("newton", "newton:solver:angular_damping", _float),), unit="1/s",
             check=_non_negative),  # fmt: skip
    Property("newton.joint_limit_ke", (C("newton", "newton:joint_limit_ke", _float),), check=_non_negative),
    Property("newton.joint_limit_kd", (C("newton", "newton:joint_limit_kd", _float),), check=_non_negative),
) + tuple(
    Property(
        f"newton.contact_{short}",
        (C("newton", f"newton:{schema_name}", convert, _INF_UNSET), C("newton", f"newton:contact_{short}", convert)),
        unit=unit,
        check=_non_negative,
    )
    for short, schema_name, convert, unit in (
        ("ke", "contactStiffness", _float, "N/m"),
        ("kd", "contactDamping", _float, "N*s/m"),
        ("kf", "contactFrictionGain", _float, "N*s/m"),
        ("ka", "contactAdhesion", _length, "m"),
    )
)
"""Settings of Newton's solvers on the PhysicsScene (None where nothing is authored: the solver's default).
The contact and joint-limit values apply to every collider and limited DOF, in SI (per radian, per meter);
``kamino.*``: :data:`SCENE_KAMINO`."""


def _tolerance(v):
    return None if math.isfinite(v) and v >= 1e-10 else "must be finite and >= 1e-10"


def _fraction(v):
    return None if 0.0 <= v <= 1.0 else "must be in [0, 1]"


# Newton's Kamino solver: NewtonKaminoSceneAPI (its newton:maxSolverIterations is newton.iterations above).
KAMINO_SCENE_API = "NewtonKaminoSceneAPI"
SCENE_KAMINO = (
    Property("kamino.padmm.primal_tolerance", (C("newton", "newton:kamino:padmm:primalTolerance", _float),),
             check=_tolerance),
    Property("kamino.padmm.dual_tolerance", (C("newton", "newton:kamino:padmm:dualTolerance", _float),),
             check=_tolerance),
    Property("kamino.padmm.complementarity_tolerance",
             (C("newton", "newton:kamino:padmm:complementarityTolerance", _float),), check=_tolerance),
    Property("kamino.padmm.warmstarting", (C("newton", "newton:kamino:padmm:warmstarting"),),
             allowed=("none", "internal", "containers")),
    Property("kamino.padmm.use_acceleration", (C("newton", "newton:kamino:padmm:useAcceleration", _bool),)),
    Property("kamino.constraints.use_preconditioning",
             (C("newton", "newton:kamino:constraints:usePreconditioning", _bool),)),
    Property("kamino.constraints.alpha", (C("newton", "newton:kamino:constraints:alpha", _float),), check=_fraction),
    Property("kamino.constraints.beta", (C("newton", "newton:kamino:constraints:beta", _float),), check=_fraction),
    Property("kamino.constraints.gamma", (C("newton", "newton:kamino:constraints:gamma", _float),), check=_fraction),
    Property("kamino.joint_correction", (C("newton", "newton:kamino:jointCorrection"),),
             allowed=("none", "twopi", "continuous")),
)  # fmt: skip
"""NewtonKaminoSceneAPI's settings (None where the scene neither authors them nor applies the schema: Kamino's
defaults, which are the schema's fallbacks): the PADMM solver's tolerances, warm start and acceleration, the
preconditioning of the constraint problem, the Baumgarte factors of the joints (alpha), limits (beta) and contacts
(gamma), and how revolute coordinates roll over. The kamino solver takes them (``SolverKamino.OPTIONS``); values
outside the schema's ranges are refused, naming the scene and the attribute. Part of :data:`SCENE_NEWTON_SOLVER`."""
SCENE_NEWTON_SOLVER += SCENE_KAMINO

# MuJoCo options (mjc:option:*) and flags (mjc:flag:*): MuJoCo's names, values as MuJoCo takes them.
_OPTION_TYPES = {
    "integrator": ("token", ("euler", "rk4", "implicit", "implicitfast")),
    "cone": ("token", ("pyramidal", "elliptic")),
    "solver": ("token", ("pgs", "cg", "newton")),
    "jacobian": ("token", ("auto", "dense", "sparse")),
    "impratio": ("float", _positive),
    "tolerance": ("float", _non_negative),
    "ls_iterations": ("int", _non_negative),
    "ls_tolerance": ("float", _non_negative),
    "noslip_iterations": ("int", _non_negative),
    "noslip_tolerance": ("float", _non_negative),
    "ccd_iterations": ("int", _non_negative),
    "ccd_tolerance": ("float", _non_negative),
    "density": ("float", _non_negative),
    "viscosity": ("float", _non_negative),
    "wind": ("vec3", None),
    "magnetic": ("vec3", None),
    "o_margin": ("float", None),
    "o_solref": ("vec2", _solref),
    "o_solimp": ("vec5", _solimp),
    "o_friction": ("vec5", None),
    "sdf_iterations": ("int", _non_negative),
    "sdf_initpoints": ("int", _non_negative),
}
_CONVERT = {"float": _float, "int": _int, "vec2": _vec(2), "vec3": _vec(3), "vec5": _vec(5)}
SCENE_OPTIONS = {}
for _name, (_kind, _extra) in _OPTION_TYPES.items():
    if _kind == "token":
        SCENE_OPTIONS[_name] = Property(f"option.{_name}", (C("mjc", f"mjc:option:{_name}"),), allowed=_extra)
    else:
        SCENE_OPTIONS[_name] = Property(
            f"option.{_name}", (C("mjc", f"mjc:option:{_name}", _CONVERT[_kind]),), check=_extra
        )
SCENE_OPTIONS["iterations"] = SCENE_ITERATIONS
SCENE_OPTIONS["timestep"] = SCENE_TIMESTEP

MUJOCO_FLAGS = (
    "actuation", "autoreset", "clampctrl", "constraint", "contact", "damper", "energy", "equality", "eulerdamp",
    "filterparent", "frictionloss", "fwdinv", "gravity", "invdiscrete", "island", "limit", "midphase", "multiccd",
    "nativeccd", "override", "refsafe", "sensor", "spring", "warmstart",
)  # fmt: skip
SCENE_FLAGS = {f: Property(f"flag.{f}", (C("mjc", f"mjc:flag:{f}", _bool),)) for f in MUJOCO_FLAGS}
SCENE_COMPILER_ANGLE = Property(
    "compiler.angle", (C("mjc", "mjc:compiler:angle"),), default="degree", allowed=("degree", "radian")
)

# ---------------------------------------------------------------- joints (per DOF of a 1-DOF joint)
JOINT_ARMATURE = Property(
    "armature",
    (
        C("newton", "newton:armature", _inertia_like),
        C("mjc", "mjc:armature", _inertia_like),
        C("physx", "physxJoint:armature", _inertia_like),
    ),
    default=0.0,
    unit="kg*m^2 | kg",
    check=_non_negative,
)
JOINT_FRICTION = Property(
    "frictionloss",
    (C("newton", "newton:friction", _effort), C("mjc", "mjc:frictionloss", _effort)),
    default=0.0,
    unit="N*m | N",
    check=_non_negative,
)
JOINT_DAMPING = Property(
    "damping",
    (C("newton", "newton:damping", _newton_damping), C("mjc", "mjc:damping", _mjc_damping)),
    default=0.0,
    unit="N*m*s/rad | N*s/m",
    check=_non_negative,
)
JOINT_STIFFNESS = Property(
    "stiffness", (C("mjc", "mjc:stiffness", _mjc_stiffness),), default=0.0, unit="N*m/rad | N/m", check=_non_negative
)
JOINT_SPRINGREF = Property("springref", (C("mjc", "mjc:springref", _mjc_position),), default=0.0, unit="rad | m")
JOINT_REF = Property("ref", (C("mjc", "mjc:ref", _mjc_position),), default=0.0, unit="rad | m")
JOINT_MARGIN = Property("limit_margin", (C("mjc", "mjc:margin", _joint_margin),), default=0.0, unit="rad | m")
JOINT_SOLREF_LIMIT = Property("solref_limit", (C("mjc", "mjc:solreflimit", _vec(2)),), default=None, check=_solref)
JOINT_SOLIMP_LIMIT = Property("solimp_limit", (C("mjc", "mjc:solimplimit", _vec(5)),), default=None, check=_solimp)
JOINT_SOLREF_FRICTION = Property(
    "solref_friction", (C("mjc", "mjc:solreffriction", _vec(2)),), default=None, check=_solref
)
JOINT_SOLIMP_FRICTION = Property(
    "solimp_friction", (C("mjc", "mjc:solimpfriction", _vec(5)),), default=None, check=_solimp
)
JOINT_ACTFRCLIMITED = Property(
    "actuatorfrclimited", (C("mjc", "mjc:actuatorfrclimited"),), default="auto", allowed=("false", "true", "auto")
)
JOINT_ACTFRCRANGE_MIN = Property(
    "actuatorfrcrange_min", (C("mjc", "mjc:actuatorfrcrange:min", _effort),), default=0.0, unit="N*m | N"
)
JOINT_ACTFRCRANGE_MAX = Property(
    "actuatorfrcrange_max", (C("mjc", "mjc:actuatorfrcrange:max", _effort),), default=0.0, unit="N*m | N"
)
JOINT_SPRINGDAMPER = Property(
    "springdamper", (C("mjc", "mjc:springdamper", _vec(2)),), default=None, unit="s, 1"
)  # (timeconst, dampratio): MuJoCo's compiler then sets stiffness and damping from the masses
JOINT_ACTGRAVCOMP = Property("actuatorgravcomp", (C("mjc", "mjc:actuatorgravcomp", _bool),), default=False)
# mjc:ref is not applied yet: MuJoCo's qpos0 offset would shift every coordinate (reported by usdsim check).
JOINT_PROPERTIES = (
    JOINT_ARMATURE, JOINT_FRICTION, JOINT_DAMPING, JOINT_STIFFNESS, JOINT_SPRINGREF, JOINT_REF, JOINT_MARGIN,
    JOINT_SOLREF_LIMIT, JOINT_SOLIMP_LIMIT, JOINT_SOLREF_FRICTION, JOINT_SOLIMP_FRICTION, JOINT_ACTFRCLIMITED,
    JOINT_ACTFRCRANGE_MIN, JOINT_ACTFRCRANGE_MAX, JOINT_ACTGRAVCOMP, JOINT_SPRINGDAMPER,
)  # fmt: skip


def _limit_gain(v, ctx):
    """A soft limit's stiffness or damping: per degree (angular) in stage units -> per radian, SI (newton:limit*,
    physxLimit:*); infinity (a hard limit) kept."""
    return _newton_damping(v, ctx)


_LIMIT_GAINS: dict = {}


def joint_limit_gains(instance: str) -> tuple:
    """The soft-limit stiffness and damping of one DOF of a joint (PhysxLimitAPI's ``instance``: "angular" of a
    revolute joint, "linear" of a prismatic one, "transX" ... "rotZ" of a generic one): ``newton:limitStiffness``
    and ``newton:limitDamping`` (NewtonJointAPI, every DOF of the joint; -inf: the engine's default, inf: a hard
    limit) over ``physxLimit:<instance>:stiffness`` and ``damping`` (0: hard), per degree for angular DOFs. One
    tuple per instance (the resolver shares results per tuple)."""
    gains = _LIMIT_GAINS.get(instance)
    if gains is None:
        suffix = "" if instance in ("angular", "linear") else f":{instance}"
        gains = _LIMIT_GAINS[instance] = tuple(
            Property(
                f"limit_{name}{suffix}",
                (
                    C("newton", f"newton:limit{name.title()}", _limit_gain, _NEG_INF_UNSET),
                    C("physx", f"physxLimit:{instance}:{name}", _limit_gain),
                ),
                default=0.0,
                unit=unit,
                check=_non_negative,
            )
            for name, unit in (("stiffness", "N*m/rad | N/m"), ("damping", "N*m*s/rad | N*s/m"))
        )
    return gains


# ---------------------------------------------------------------- colliders
SHAPE_MARGIN = Property(
    "margin",
    (
        C("newton", "newton:contactMargin", _length, _INF_UNSET),
        C("mjc", "mjc:margin", _length),
        C("physx", "physxCollision:contactOffset", _length, _NEG_UNSET),
    ),
    default=0.0,
    unit="m",
    check=_non_negative,
)
SHAPE_GAP = Property(
    "gap",
    (C("newton", "newton:contactGap", _length, _INF_UNSET), C("mjc", "mjc:gap", _length)),
    default=0.0,
    unit="m",
    check=_non_negative,
)
SHAPE_CONDIM = Property(
    "condim",
    (C("mjc", "mjc:condim", _int),),
    default=3,
    check=lambda v: None if v in (1, 3, 4, 6) else "condim must be 1, 3, 4 or 6",
)
SHAPE_PRIORITY = Property("priority", (C("mjc", "mjc:priority", _int),), default=0)
SHAPE_SOLMIX = Property("solmix", (C("mjc", "mjc:solmix", _float),), default=1.0, check=_non_negative)
SHAPE_SOLREF = Property("solref", (C("mjc", "mjc:solref", _vec(2)),), default=None, check=_solref)
SHAPE_SOLIMP = Property("solimp", (C("mjc", "mjc:solimp", _vec(5)),), default=None, check=_solimp)
SHAPE_GROUP = Property("group", (C("mjc", "mjc:group", _int),), default=0)


# newton:massModel "solid" is MuJoCo's "exact" mesh inertia (the enclosed volume), "shell" is "shell".
def _newton_mass_model(v, ctx):
    if str(v) not in ("solid", "shell"):
        raise ValueError(f"unknown mass model {str(v)!r} (solid or shell)")
    return "exact" if str(v) == "solid" else "shell"


def _mjc_inertia(v, ctx):
    if str(v) not in MESH_INERTIA_MODES:
        raise ValueError(f"unknown mesh inertia {str(v)!r} ({', '.join(MESH_INERTIA_MODES)})")
    return str(v)


SHAPE_MASS_MODEL = Property(
    "mass_model",
    (C("newton", "newton:massModel", _newton_mass_model), C("mjc", "mjc:inertia", _mjc_inertia)),
    default="legacy",
)
SHAPE_SHELL_THICKNESS = Property(
    "shell_thickness",
    (C("newton", "newton:shellThickness", _length, _INF_UNSET),),
    default=None,  # MuJoCo's shell: the density is per unit area (a wall one stage unit thick)
    unit="m",
    check=lambda v: None if v is None or v > 0 else "must be positive",
)
SHAPE_PROPERTIES = (
    SHAPE_MARGIN,
    SHAPE_GAP,
    SHAPE_CONDIM,
    SHAPE_PRIORITY,
    SHAPE_SOLMIX,
    SHAPE_SOLREF,
    SHAPE_SOLIMP,
    SHAPE_GROUP,
    SHAPE_MASS_MODEL,
    SHAPE_SHELL_THICKNESS,
)


# ---------------------------------------------------------------- SDF colliders (NewtonSDFCollisionAPI)
def _sdf_resolution(v):
    return None if 8 <= v < 1 << 16 and v % 8 == 0 else "must be a multiple of 8 from 8 to 65528"


def _finite_positive(v):
    return None if v is None or (math.isfinite(v) and v > 0) else "must be a finite number > 0"


def _per_volume_stiffness(v, ctx):
    """newton:hydroelasticStiffness: force per distance cubed in stage units -> N/m^3."""
    return float(v) * ctx.kilograms_per_unit * ctx.meters_per_unit / ctx.meters_per_unit**3


SDF_MAX_RESOLUTION = Property(
    "sdf_max_resolution", (C("newton", "newton:sdfMaxResolution", _int),), default=64, check=_sdf_resolution
)
SDF_TARGET_VOXEL_SIZE = Property(
    "sdf_target_voxel_size",
    (C("newton", "newton:sdfTargetVoxelSize", _length, _NEG_INF_UNSET),),
    default=None,  # (-inf, the fallback: newton:sdfMaxResolution sets the grid)
    unit="m",
    check=_finite_positive,
)
SDF_NARROW_BAND_INNER = Property(
    "sdf_narrow_band_inner",
    (C("newton", "newton:sdfNarrowBandInner", _length),),
    default=-0.1,
    unit="m",
    check=lambda v: None if math.isfinite(v) and v < 0 else "must be a finite distance < 0 (inside the surface)",
)
SDF_NARROW_BAND_OUTER = Property(
    "sdf_narrow_band_outer",
    (C("newton", "newton:sdfNarrowBandOuter", _length),),
    default=0.1,
    unit="m",
    check=lambda v: None if math.isfinite(v) and v > 0 else "must be a finite distance > 0 (outside the surface)",
)
SDF_TEXTURE_FORMAT = Property(
    "sdf_texture_format",
    (C("newton", "newton:sdfTextureFormat"),),
    default="uint16",
    allowed=("uint8", "uint16", "float32"),
)
SDF_PADDING = Property(
    "sdf_padding",
    (C("newton", "newton:sdfPadding", _length, _NEG_INF_UNSET),),
    default=None,  # (-inf: the engine's, the shape's contact gap)
    unit="m",
    check=lambda v: None if v is None or (math.isfinite(v) and v >= 0) else "must be a finite distance >= 0",
)
SDF_HYDROELASTIC = Property("hydroelastic", (C("newton", "newton:hydroelasticEnabled", _bool),), default=False)
SDF_HYDROELASTIC_STIFFNESS = Property(
    "hydroelastic_stiffness",
    (C("newton", "newton:hydroelasticStiffness", _per_volume_stiffness),),
    default=1.0e10,
    unit="N/m^3",
    check=_finite_positive,
)
SDF_PROPERTIES = (
    SDF_MAX_RESOLUTION,
    SDF_TARGET_VOXEL_SIZE,
    SDF_NARROW_BAND_INNER,
    SDF_NARROW_BAND_OUTER,
    SDF_TEXTURE_FORMAT,
    SDF_PADDING,
    SDF_HYDROELASTIC,
    SDF_HYDROELASTIC_STIFFNESS,
)
"""Read on colliders that apply NewtonSDFCollisionAPI (:func:`~newton_usd.usd.colliders.sdf_collision`)."""


# ---------------------------------------------------------------- height fields (NewtonUsdHeightfieldAPI on a Mesh)
def _elevation(v, ctx):
    return np.asarray(v, dtype=np.float64).ravel()  # checked by the reader (a message must not print it all)


def _hfield_size(v, ctx):
    return tuple(x * ctx.meters_per_unit for x in _vec(4)(v, ctx))


def _at_least_two(v):
    return None if v >= 2 else "must be at least 2"


def _all_positive(v):
    return None if all(x > 0 for x in v) else "every value must be positive"


HEIGHTFIELD_ROWS = Property(
    "heightfield_rows", (C("newton", "newton:usd:heightfield:rows", _int),), default=0, check=_at_least_two
)
HEIGHTFIELD_COLUMNS = Property(
    "heightfield_columns", (C("newton", "newton:usd:heightfield:columns", _int),), default=0, check=_at_least_two
)
HEIGHTFIELD_ELEVATION = Property(
    "heightfield_elevation", (C("newton", "newton:usd:heightfield:elevation", _elevation),), default=None
)
HEIGHTFIELD_SIZE = Property(
    "heightfield_size",
    (C("newton", "newton:usd:heightfield:size", _hfield_size),),
    default=(1.0, 1.0, 1.0, 0.1),
    unit="m",
    check=_all_positive,
)
HEIGHTFIELD_PROPERTIES = (HEIGHTFIELD_ROWS, HEIGHTFIELD_COLUMNS, HEIGHTFIELD_ELEVATION, HEIGHTFIELD_SIZE)

# ---------------------------------------------------------------- bodies
BODY_GRAVCOMP = Property("gravcomp", (C("mjc", "mjc:body:gravcomp", _float),), default=0.0)
"""Gravity compensation (0..1 of the body's weight), as mujoco-usd-converter writes it (no schema)."""


def _degrees(v, ctx):
    return float(v) * RAD_PER_DEG


BODY_MAX_LINEAR_VELOCITY = Property(
    "max_linear_velocity",
    (C("physx", "physxRigidBody:maxLinearVelocity", _length),),
    default=math.inf,
    unit="m/s",
    check=_non_negative,
)
"""PhysX's bound on the speed of the body's center of mass (stage units per second; PhysxSchema's fallback: none)."""
BODY_MAX_ANGULAR_VELOCITY = Property(
    "max_angular_velocity",
    (C("physx", "physxRigidBody:maxAngularVelocity", _degrees),),
    default=math.inf,
    unit="rad/s",
    check=_non_negative,
)
"""PhysX's bound on the body's angular speed (degrees per second, as PhysxSchema's; its fallback 5729.58, 100 rad/s,
holds on a stage PhysX wrote: :func:`~newton_usd.usd.bodies.import_bodies`)."""
BODY_VELOCITY_BOUNDS = (BODY_MAX_LINEAR_VELOCITY, BODY_MAX_ANGULAR_VELOCITY)
PHYSX_MAX_ANGULAR_VELOCITY = 100.0
"""rad/s: PhysX's own bound on a dynamic body's angular speed (PhysxSchema's fallback, 5729.58 deg/s)."""

# ---------------------------------------------------------------- articulations (on the ArticulationRootAPI prim)
ARTICULATION_SELF_COLLISION = Property(
    "self_collision",
    (C("newton", "newton:selfCollisionEnabled", _bool), C("physx", "physxArticulation:enabledSelfCollisions", _bool)),
    default=True,
)
"""Whether the bodies of an articulation collide with each other (false: every pair of them is filtered)."""

# ---------------------------------------------------------------- loop closures (MjcEquality*API on a joint prim)
EQ_TORQUESCALE = Property("torquescale", (C("mjc", "mjc:torqueScale", _float),), default=1.0)


def _mimic_offset(v, ctx):
    """newton:mimicCoef0: degrees (angular follower) or stage distance -> rad or m."""
    return float(v) * (RAD_PER_DEG if ctx.angular else ctx.meters_per_unit)


def _mjc_offset(v, ctx):
    """mjc:coef0: radians (angular follower, as MuJoCo) or stage distance -> rad or m."""
    return float(v) * (1.0 if ctx.angular else ctx.meters_per_unit)


# Joint equalities (NewtonMimicAPI, MjcEqualityJointAPI on the follower joint): follower = p(leader).
MIMIC_ENABLED = Property("enabled", (C("newton", "newton:mimicEnabled", _bool),), default=True)
MIMIC_COEFFICIENTS = (
    Property("coef0", (C("newton", "newton:mimicCoef0", _mimic_offset), C("mjc", "mjc:coef0", _mjc_offset)),
             default=0.0, unit="rad | m"),
    Property("coef1", (C("newton", "newton:mimicCoef1", _float), C("mjc", "mjc:coef1", _float)), default=1.0),
    Property("coef2", (C("mjc", "mjc:coef2", _float),), default=0.0),
    Property("coef3", (C("mjc", "mjc:coef3", _float),), default=0.0),
    Property("coef4", (C("mjc", "mjc:coef4", _float),), default=0.0),
)  # fmt: skip

# ---------------------------------------------------------------- physics materials
MATERIAL_TORSIONAL = Property(
    "torsional_friction",
    (C("newton", "newton:torsionalFriction", _length), C("mjc", "mjc:torsionalfriction", _length)),
    default=0.005,
    unit="m",
    check=_non_negative,
)
MATERIAL_ROLLING = Property(
    "rolling_friction",
    (C("newton", "newton:rollingFriction", _length), C("mjc", "mjc:rollingfriction", _length)),
    default=0.0001,
    unit="m",
    check=_non_negative,
)


# ---------------------------------------------------------------- PhysX tendons (PhysxSchema, multiple-apply)
def _first(v):
    """The first of a float[] (PhysX reads only the first gearing and force coefficient of an axis)."""
    values = list(v) if not isinstance(v, (int, float)) else [v]
    if not values:
        raise ValueError("an empty array")
    return float(values[0])


def _gearing(v, ctx):
    """A fixed tendon axis' gearing: tendon length per degree (angular; PhysX: distance/deg) or per distance, ->
    meters per radian or per meter."""
    return _first(v) * (ctx.meters_per_unit / RAD_PER_DEG if ctx.angular else 1.0)


def _force_coefficient(v, ctx):
    """A fixed tendon axis' force coefficient: the moment arm of the tendon's force (angular: distance) -> m."""
    return _first(v) * (ctx.meters_per_unit if ctx.angular else 1.0)


def _tendon_length(v, ctx):
    return float(v) * ctx.meters_per_unit  # (-inf, inf kept: no limit, or PhysX's "from the start pose")


def _tendon_gain(v, ctx):
    """A tendon's stiffness (force/distance) or damping (force*time/distance): mass/time^2, mass/time -> SI."""
    return float(v) * ctx.kilograms_per_unit


_TENDON_ROOT = (
    ("stiffness", _tendon_gain, 0.0),
    ("damping", _tendon_gain, 0.0),
    ("limitStiffness", _tendon_gain, 0.0),
    ("offset", _tendon_length, 0.0),
    ("tendonEnabled", _bool, True),
)
_TENDON_LIMITS = (("lowerLimit", _tendon_length, -math.inf), ("upperLimit", _tendon_length, math.inf))
_TENDON = {  # kind -> (attribute, conversion, PhysX's fallback)
    "axis": (("gearing", _gearing, 1.0), ("forceCoefficient", _force_coefficient, 1.0)),
    "fixed_root": _TENDON_ROOT + (("restLength", _tendon_length, 0.0),) + _TENDON_LIMITS,
    "spatial_root": _TENDON_ROOT,
    "attachment": (
        ("gearing", lambda v, ctx: float(v), 1.0),
        ("localPos", _vec(3), (0.0, 0.0, 0.0)),
        ("parentAttachment", None, ""),
    ),
    "leaf": (("restLength", _tendon_length, -math.inf),) + _TENDON_LIMITS,
}
_TENDON_PROPERTIES: dict = {}


def physx_tendon_properties(kind: str, instance: str) -> tuple:
    """The properties of one instance of a PhysX tendon API on a prim (``physxTendon:<instance>:<attribute>``), by
    ``kind``: "axis" (PhysxTendonAxisAPI on a joint: gearing, forceCoefficient), "fixed_root" (what
    PhysxTendonAxisRootAPI adds: stiffness, damping, limitStiffness, offset, tendonEnabled, restLength, lowerLimit,
    upperLimit), "spatial_root" (PhysxTendonAttachmentRootAPI: the first five), "attachment" (PhysxTendonAttachmentAPI,
    on a body: gearing, localPos, parentAttachment) or "leaf" (PhysxTendonAttachmentLeafAPI: restLength, lowerLimit,
    upperLimit); PhysX's fallbacks as defaults (PhysxSchema is not registered here). Each named
    ``<kind>:<instance>:<attribute>``; one tuple per (kind, instance)."""
    key = (kind, instance)
    table = _TENDON_PROPERTIES.get(key)
    if table is None:
        table = _TENDON_PROPERTIES[key] = tuple(
            Property(
                f"{kind}:{instance}:{attr}", (C("physx", f"physxTendon:{instance}:{attr}", convert),), default=default
            )
            for attr, convert, default in _TENDON[kind]
        )
    return table


# ---------------------------------------------------------------- typed mjc prims (MjcActuator, MjcTendon)
_BY_TYPE = {"int": _int, "bool": _bool, "double": _float, "float": _float, "token": None}
_schema_properties_cache: dict = {}


def schema_properties(schema: str) -> dict:
    """Every attribute of a typed schema (e.g. "MjcActuator") as a Property, by attribute name; the
    Property's name is the schema's name, a colon and the attribute's name without its namespace
    ("MjcTendon:range:min", "NewtonUsdContactPair:condim").

    Values are taken as MuJoCo takes them (the actuator and tendon parameters have no stage-unit
    conversion); tokens are checked against the schema's allowed tokens. Needs the schema registered.
    """
    table = _schema_properties_cache.get(schema)
    if table is not None:
        return table
    from pxr import Usd  # noqa: PLC0415

    table = {}
    definition = Usd.SchemaRegistry().FindConcretePrimDefinition(schema)
    if definition is not None:
        for name in definition.GetPropertyNames():
            attr = definition.GetAttributeDefinition(name)
            if not attr:
                continue
            type_name = str(attr.GetTypeName())
            allowed = attr.GetMetadata("allowedTokens")
            if type_name.endswith("[]"):
                convert = lambda v, ctx: tuple(float(x) for x in v)  # noqa: E731
            else:
                convert = _BY_TYPE.get(type_name, lambda v, ctx: v)
            short = name.removeprefix("newton:usd:") if name.startswith("newton:usd:") else name.split(":", 1)[-1]
            table[name] = Property(
                f"{schema}:{short}",  # unique: the resolver knows a property by its name
                (C("mjc", name, convert),),
                default=attr.GetFallbackValue(),
                allowed=tuple(str(t) for t in allowed) if allowed else (),
            )
    _schema_properties_cache[schema] = table
    return table
