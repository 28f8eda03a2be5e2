"""Autograder for Lecture 20 (Attention & Transformers) and HW11 (Building GPT-2).

A submission flows loader -> sandbox -> checks -> results; see docs/ARCHITECTURE.md.
"""
