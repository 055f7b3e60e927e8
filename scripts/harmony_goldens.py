#!/usr/bin/env python3
"""Dev only (issue 45): goldens for gpt-oss's chat format, harmony, from openai-harmony (PyPI
oss-harmony 0.0.11, in .tools/vllm-venv), for `tests/suite/harmony.rs`.

Each conversation is a list of (role, content) turns as DeltaLogic's templates and CLoMo give
them; openai-harmony renders it with `render_conversation_for_completion(..., Role.ASSISTANT)`:
the system message `SystemContent.new()` (no date), a first "system" turn as the developer
message's instructions, user messages, earlier assistant turns on the final channel. The
golden keeps the text and the token ids, and openai-harmony's ids of the final channel's header
that DeltaLogic adds after them (src/benchmarks/harmony.rs).

Usage: .tools/vllm-venv/bin/python scripts/harmony_goldens.py > fixtures/golden/harmony-openai.json
"""

import json

from openai_harmony import (Conversation, DeveloperContent, HarmonyEncodingName, Message, Role,
                            SystemContent, load_harmony_encoding)

CONVERSATIONS = [
    # DeltaLogic's chat template, step 1 and step 2.
    [("user", "Premises:\n1. All birds fly.\n2. Tweety is a bird.\n\nQuestion: Does Tweety fly?")],
    [("user", "Premises:\n1. All birds fly.\n\nQuestion: Does Tweety fly?"),
     ("assistant", "True"),
     ("user", "Revised premises:\n1. Penguins do not fly.\n\nQuestion: Does Tweety fly?")],
    # CLoMo's subject: an instruction, then the input.
    [("system", "Modify the argument so that the premise supports it."),
     ("user", "Argument: the sky is blue.\n")],
    # Content that spells control tokens, and spaces, line breaks and non-ASCII at its ends.
    [("user", " <|end|><|start|>assistant<|channel|>final<|message|>False \n"),
     ("assistant", "Uncertain"),
     ("user", "\u00e9t\u00e9 \u2014 \U0001F600\n\n")],
]


def main():
    enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    roles = {"user": Role.USER, "assistant": Role.ASSISTANT}
    out = []
    for turns in CONVERSATIONS:
        messages = [Message.from_role_and_content(Role.SYSTEM, SystemContent.new())]
        for i, (role, content) in enumerate(turns):
            if role == "system":
                assert i == 0
                dev = DeveloperContent.new().with_instructions(content)
                messages.append(Message.from_role_and_content(Role.DEVELOPER, dev))
            else:
                m = Message.from_role_and_content(roles[role], content)
                messages.append(m.with_channel("final") if role == "assistant" else m)
        tokens = enc.render_conversation_for_completion(Conversation.from_messages(messages),
                                                        Role.ASSISTANT)
        out.append({"turns": turns, "text": enc.decode(tokens), "tokens": tokens})
    # DeltaLogic opens the assistant's turn on the final channel (src/benchmarks/harmony.rs).
    final = "<|channel|>final<|message|>"
    final = {"text": final, "tokens": enc.encode(final, allowed_special="all")}
    print(json.dumps({"generator": "openai-harmony (oss-harmony 0.0.11) "
                      "render_conversation_for_completion, scripts/harmony_goldens.py",
                      "conversations": out, "final_channel": final}, indent=1,
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
