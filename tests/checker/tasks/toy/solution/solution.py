import json
import sys

json.load(sys.stdin)
print(json.dumps({"x": 0.75}))
