"""Reusable UI pieces: plain functions that build components, with no database access."""
