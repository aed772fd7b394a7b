"""Kernels of the Gaussian family: LAP for precision matrices and covariance selection.

Functions on validated arrays (a sample covariance or standardised rows, a pattern of
unknowns): no estimator, no column names, no warnings the class can say better.
"""
