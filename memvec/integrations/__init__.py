"""Framework retrievers over memvec: LangChain (`memvec.integrations.langchain`, extra `memvec[langchain]`)
and LlamaIndex (`memvec.integrations.llamaindex`, extra `memvec[llamaindex]`).

Both search an agent's archival or recall tier either in an open `Memory` or on a running
`memvec serve` (URL + key), and carry each hit's citation, scores, tags, date and record id as
metadata. memvec itself never imports these modules.
"""
