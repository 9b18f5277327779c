# SPDX-License-Identifier: Apache-2.0
import sys

from memkit.cli import main

sys.exit(main())
