// Command anerun runs a packed model: `anerun model.aneb "prompt"` memory-maps the bundle,
// applies its chat template and streams the generated text to stdout; `anerun Org/Name
// "prompt"` does the same with a Hugging Face model, fetched and packed into the local store
// the first time. `anerun -i MODEL` is an interactive chat; the subcommands serve the OpenAI
// API (serve), manage the store (pull, import, list, rm), measure speed (bench) and perplexity
// (perplexity), print logits for comparison with transformers (logits), show what the
// tokenizer and the chat template do (tokenize, template), check what this machine can run
// (doctor) and print the version (version).
package main
