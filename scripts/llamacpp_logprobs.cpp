// Dev only: per-token log-probabilities from llama.cpp, the oracle that
// scripts/llamacpp_golden.py compares deltalogic against.
// stdin: one sequence per line, "N t0 t1 ... tk" (N = context length in tokens);
// stdout: per line, the natural-log probability of tokens N..k, each given all before it.
// Every line is decoded from an empty KV cache (f32 K/V cache, no flash attention), unless the
// third argument is "reuse": then the tokens a line shares with the line before are kept in the
// cache and only the rest is decoded (for many prompts with shared prefixes, as in a store).
// With the third argument "greedy K", each line is "N t0 ... t(N-1)" (a whole context) and the
// output is two lines: the logits over the vocabulary after it, then the K tokens picked by
// argmax one after another (the first largest logit), each decoded in turn.
#include "llama.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [THREADS [reuse]] < sequences\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    // The repacked matmuls (AVX-512 / AMX interleaved blocks) are off unless LLAMACPP_REPACK=1:
    // the AMX one faults on CPUs whose tiles the kernel does not enable. Both compute the same
    // function in another order of float operations.
    const char * repack = getenv("LLAMACPP_REPACK");
    mp.use_extra_bufts = repack && std::string(repack) == "1";
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = 2048;
    cp.n_ubatch = 512;  // 2048 made every decode twice as slow here
    // LLAMACPP_UBATCH=1 decodes every token alone: llama.cpp's one-row products (vec_dot)
    // instead of its batched ones, another order of float operations, for its own spread.
    if (const char * ub = getenv("LLAMACPP_UBATCH")) cp.n_ubatch = atoi(ub);
    cp.n_threads = cp.n_threads_batch = argc > 2 ? atoi(argv[2]) : 2;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create context\n"); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    if (argc > 4 && std::string(argv[3]) == "greedy") {
        const int k = atoi(argv[4]);
        std::string line;
        while (std::getline(std::cin, line)) {
            std::istringstream in(line);
            int n;
            in >> n;
            std::vector<llama_token> toks;
            for (llama_token t; in >> t;) toks.push_back(t);
            if (n < 1 || n != (int) toks.size()) { fprintf(stderr, "bad line: %s\n", line.c_str()); return 1; }
            llama_memory_seq_rm(llama_get_memory(ctx), 0, 0, -1);
            llama_batch batch = llama_batch_init(n, 0, 1);
            for (int i = 0; i < n; i++) {
                batch.token[i] = toks[i];
                batch.pos[i] = i;
                batch.n_seq_id[i] = 1;
                batch.seq_id[i][0] = 0;
                batch.logits[i] = i == n - 1;
            }
            batch.n_tokens = n;
            if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
            llama_batch_free(batch);
            const float * lg = llama_get_logits_ith(ctx, -1);
            for (int v = 0; v < n_vocab; v++) printf("%s%.9g", v ? " " : "", lg[v]);
            printf("\n");
            for (int j = 0; j < k; j++) {
                int best = 0;
                for (int v = 1; v < n_vocab; v++) if (lg[v] > lg[best]) best = v;
                printf("%s%d", j ? " " : "", best);
                llama_batch one = llama_batch_init(1, 0, 1);
                one.token[0] = best;
                one.pos[0] = n + j;
                one.n_seq_id[0] = 1;
                one.seq_id[0][0] = 0;
                one.logits[0] = 1;
                one.n_tokens = 1;
                if (llama_decode(ctx, one) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
                llama_batch_free(one);
                lg = llama_get_logits_ith(ctx, -1);
            }
            printf("\n");
            fflush(stdout);
        }
        llama_free(ctx);
        llama_model_free(model);
        return 0;
    }
    const bool reuse = argc > 3 && std::string(argv[3]) == "reuse";
    std::vector<llama_token> prev;
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        int n_ctx;
        in >> n_ctx;
        std::vector<llama_token> toks;
        for (llama_token t; in >> t;) toks.push_back(t);
        const int n = (int) toks.size();
        if (n_ctx < 1 || n_ctx >= n) { fprintf(stderr, "bad line: %s\n", line.c_str()); return 1; }
        // Keep the shared prefix, but always decode from n_ctx - 1: its logits score the first
        // continuation token.
        int keep = 0;
        if (reuse) {
            while (keep < (int) prev.size() && keep < n_ctx - 1 && prev[keep] == toks[keep]) keep++;
        }
        llama_memory_seq_rm(llama_get_memory(ctx), 0, keep, -1);
        prev = toks;
        const int m = n - keep;
        llama_batch batch = llama_batch_init(m, 0, 1);
        for (int j = 0; j < m; j++) {
            const int i = keep + j;
            batch.token[j] = toks[i];
            batch.pos[j] = i;
            batch.n_seq_id[j] = 1;
            batch.seq_id[j][0] = 0;
            batch.logits[j] = i >= n_ctx - 1;
        }
        batch.n_tokens = m;
        if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
        for (int i = n_ctx - 1; i < n - 1; i++) {
            const float * lg = llama_get_logits_ith(ctx, i - keep);
            double mx = lg[0];
            for (int v = 1; v < n_vocab; v++) mx = std::max(mx, (double) lg[v]);
            double z = 0;
            for (int v = 0; v < n_vocab; v++) z += std::exp(lg[v] - mx);
            printf("%s%.7f", i == n_ctx - 1 ? "" : " ", lg[toks[i + 1]] - mx - std::log(z));
        }
        printf("\n");
        fflush(stdout);
        llama_batch_free(batch);
    }
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
