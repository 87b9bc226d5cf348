"""`memvec mcp`: MemGPT's memory tools for one agent, served over the Model Context Protocol.

`tools` holds what the tools do (plain Python over a `Memory`, no MCP import); `server` registers
them with the official SDK's `MCPServer` and serves them over stdio or streamable HTTP.
"""
