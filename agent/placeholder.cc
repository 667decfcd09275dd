// Placeholder translation unit until the agent sources land.
