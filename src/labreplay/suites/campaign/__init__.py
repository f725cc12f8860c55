"""Campaign suite: Dynamical-SDL-1 budgeted campaigns over recorded reaction maps."""
