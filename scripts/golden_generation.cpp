// Dev only: llama.cpp's greedy decoding, the oracle of the generation goldens
// (scripts/golden_generation.sh builds and runs it).
// stdin: one prompt per line, its UTF-8 bytes in hex (prompts hold newlines).
// stdout: three lines per prompt: the prompt's token ids (llama.cpp's tokenizer, special tokens
// written in the text parsed as such, BOS only where the vocabulary asks for one), the greedy tokens, and each greedy token's natural-log
// probability. Greedy = the largest logit, ties to the lowest id (our rule, not a sampler's);
// an end-of-generation token ends the line after being written, as in deltalogic.
// Each prompt starts from an empty cache; f32 K/V cache, no flash attention, no weight
// repacking (its AMX kernels crash on this machine kind), so only the weights' own format and
// llama.cpp's activation quantisation differ from f32 arithmetic.
#include "llama.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

static std::string unhex(const std::string & h) {
    std::string out;
    for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back((char) std::stoi(h.substr(i, 2), nullptr, 16));
    return out;
}

static bool decode(llama_context * ctx, const std::vector<llama_token> & toks, int pos0) {
    llama_batch batch = llama_batch_init((int) toks.size(), 0, 1);
    for (size_t j = 0; j < toks.size(); j++) {
        batch.token[j] = toks[j];
        batch.pos[j] = pos0 + (int) j;
        batch.n_seq_id[j] = 1;
        batch.seq_id[j][0] = 0;
        batch.logits[j] = j + 1 == toks.size();
    }
    batch.n_tokens = (int) toks.size();
    const bool ok = llama_decode(ctx, batch) == 0;
    llama_batch_free(batch);
    return ok;
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf MAX_TOKENS [THREADS] < hex-prompts\n", argv[0]);
        return 2;
    }
    const int max_tokens = atoi(argv[2]);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.use_extra_bufts = false;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = 2048;
    cp.n_ubatch = 512;
    cp.n_threads = cp.n_threads_batch = argc > 3 ? atoi(argv[3]) : 2;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create context\n"); return 1; }
    const int n_vocab = llama_vocab_n_tokens(vocab);

    std::string line;
    while (std::getline(std::cin, line)) {
        const std::string text = unhex(line);
        std::vector<llama_token> prompt(text.size() + 8);
        const int n = llama_tokenize(vocab, text.data(), (int) text.size(), prompt.data(),
                                     (int) prompt.size(), /*add_special*/ true, /*parse_special*/ true);
        if (n <= 0) { fprintf(stderr, "cannot tokenize a prompt\n"); return 1; }
        prompt.resize(n);
        llama_memory_clear(llama_get_memory(ctx), true);
        if (!decode(ctx, prompt, 0)) { fprintf(stderr, "decode failed\n"); return 1; }
        std::vector<llama_token> out;
        std::vector<double> lps;
        for (int step = 0; step < max_tokens; step++) {
            const float * lg = llama_get_logits_ith(ctx, -1);
            int best = 0;
            for (int v = 1; v < n_vocab; v++) if (lg[v] > lg[best]) best = v;
            double z = 0;
            for (int v = 0; v < n_vocab; v++) z += std::exp((double) lg[v] - lg[best]);
            out.push_back(best);
            lps.push_back(-std::log(z));
            if (llama_vocab_is_eog(vocab, best) || step + 1 == max_tokens) break;
            if (!decode(ctx, {best}, n + step)) { fprintf(stderr, "decode failed\n"); return 1; }
        }
        for (int i = 0; i < n; i++) printf("%s%d", i ? " " : "", prompt[i]);
        printf("\n");
        for (size_t i = 0; i < out.size(); i++) printf("%s%d", i ? " " : "", out[i]);
        printf("\n");
        for (size_t i = 0; i < lps.size(); i++) printf("%s%.7f", i ? " " : "", lps[i]);
        printf("\n");
        fflush(stdout);
    }
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
