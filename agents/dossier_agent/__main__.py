"""`python -m dossier_agent` runs the command line, for nodes that use the source folder without installing."""

import sys

from dossier_agent.cli import main

sys.exit(main())
