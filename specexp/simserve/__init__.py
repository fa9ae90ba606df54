"""The simulator on the wall clock behind an OpenAI-compatible HTTP server (`python -m specexp.sim`).

- `realtime`: the engine stepped in real time (optionally sped up), one request queue;
- `http`, `openai`: the server and the OpenAI wire format it speaks (SSE streams, usage); `wire`:
  HTTP/1.1 heads and responses;
- `metrics`: its `/metrics` in vLLM's names, so a client reads it as it reads vLLM;
- `prompts`: text in, token counts out (the server has no tokenizer);
- `cli`: the command line.
"""
