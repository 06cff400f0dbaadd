"""Memory-fit estimator, moving from one module into sub-modules; this re-export lasts until the importers follow."""

from apps.workloads.memory.breakdown import *  # noqa: F403
from apps.workloads.memory.capacity import *  # noqa: F403
from apps.workloads.memory.errors import *  # noqa: F403
from apps.workloads.memory.hf_config import *  # noqa: F403
from apps.workloads.memory.inference import *  # noqa: F403
from apps.workloads.memory.precisions import *  # noqa: F403
from apps.workloads.memory.search import *  # noqa: F403
from apps.workloads.memory.shapes import *  # noqa: F403
from apps.workloads.memory.training import *  # noqa: F403
