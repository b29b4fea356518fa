"""`python -m envcheck`."""

import sys

from envcheck.cli import main

sys.exit(main())
