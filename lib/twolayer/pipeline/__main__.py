"""``python -m twolayer.pipeline`` = the ``twolayer`` command."""

import sys

from .cli import main

sys.exit(main())
