"""What the two models are told, and how their answers are read and recorded."""
