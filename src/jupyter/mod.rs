//! The Jupyter kernel (issue: Jupyter kernel).
