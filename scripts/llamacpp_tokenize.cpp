// Dev only: llama.cpp's tokens for texts, as `llama-tokenize` gives them by default (BOS where
// the vocabulary asks for it, control-token text read as text), for scripts that need many
// texts tokenized without loading the model each time.
// stdin: texts separated by NUL bytes; stdout: one line of space-separated ids per text.
#include "llama.h"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf < texts\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const bool add_bos = llama_vocab_get_add_bos(vocab);
    std::string text;
    while (std::getline(std::cin, text, '\0')) {
        std::vector<llama_token> ids(text.size() + 2);
        int n = llama_tokenize(vocab, text.data(), text.size(), ids.data(), ids.size(), add_bos, false);
        if (n < 0) { fprintf(stderr, "tokenizing failed\n"); return 1; }
        for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    }
    llama_model_free(model);
    return 0;
}
