//! CUDA C (placeholder until written below).
