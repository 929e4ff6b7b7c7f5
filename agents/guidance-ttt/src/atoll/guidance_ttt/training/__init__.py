"""The method's update: advantages, training data and the Tinker trainer of `training=tinker`."""
