import sys

from nunasim.cli import main

sys.exit(main())
