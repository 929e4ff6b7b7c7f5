"""The `atoll euler` commands, one module each; `atoll.euler.cli` assembles them."""
