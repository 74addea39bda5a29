"""Segmentation over process counts: where the scaling behaviour of a metric changes (PMNF fits,
smooth laws, load-aware undisturbed time), and its report."""
