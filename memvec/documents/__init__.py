"""Files into chunks: parse a document (formats), then split it to fit the embedding model (chunking).
Pure: it reads no store and no model; the engine hands it the model's tokenizer."""
