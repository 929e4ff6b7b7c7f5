"""Standard-library-only modules that also run outside atoll's own environment.

The managed Python 3.11 environment of atoll-pi-train has none of atoll
installed; its scripts import these with this folder on their path (see
`atoll.pi_train.env.portable_path`). So a module here imports only the
standard library and its neighbours here, runs on Python 3.11, and this
`__init__` stays empty of code.
"""
