"""``python -m aianalysis`` — the same as the ``aianalysis`` console script."""

import sys

from aianalysis import cli

sys.exit(cli.main())
