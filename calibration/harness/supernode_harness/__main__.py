"""`python -m supernode_harness`: the same command line as harness.py."""

import sys

from .cli import main

sys.exit(main())
