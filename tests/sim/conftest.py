import os
import sys

import torch

# sim_programs.py is a plain module beside the tests
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
torch.set_num_threads(1)
