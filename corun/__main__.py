import sys

from corun.cli.main import main

sys.exit(main())
