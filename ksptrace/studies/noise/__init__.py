"""Noise: what injected detours should cost (the stationary model's truth) against what the
noisy and noise-free runs measured."""
