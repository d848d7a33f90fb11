"""``python -m grobot``: the command line."""

import sys

from grobot.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
