import os
import sys

# the corpus is a plain module beside the tests (also imported by the interpreter subprocess)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
