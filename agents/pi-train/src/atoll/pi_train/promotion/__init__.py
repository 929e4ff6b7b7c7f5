"""`atoll pi train promote`: the rule, the inputs checked up front, the sampling and the decision."""
