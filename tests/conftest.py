import sys
from pathlib import Path

# Test helpers (strategies.py) are imported as plain modules from this folder.
sys.path.insert(0, str(Path(__file__).parent))
