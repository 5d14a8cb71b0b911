"""Allow ``python -m paired_rollouts``."""

import sys

from paired_rollouts.cli import main

sys.exit(main())
