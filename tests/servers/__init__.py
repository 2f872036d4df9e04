"""What the tests run on 127.0.0.1: the scripted stand-ins (an OpenAI-compatible and Anthropic judge server,
a RAG service) and the real servers and tools in their own virtual environments (Label Studio, MLflow,
Phoenix, promptfoo, llama.cpp with two small judge models); common.py is what they share."""
