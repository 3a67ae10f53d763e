"""`python -m study`: the study's command line (see study/cli.py)."""
import sys

from study.cli import main

sys.exit(main())
