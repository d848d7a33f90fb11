"""Tools a bot can call: built-in tools and the tools of its MCP servers."""
