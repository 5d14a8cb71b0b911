"""Scripted agents: the reference agent that knows each task's plan (naive and recovering policies)."""
