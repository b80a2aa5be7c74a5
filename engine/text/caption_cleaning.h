// LlamaGen's caption cleaning (language/t5.py, T5Embedder.clean_caption, applied twice before every T5
// tokenisation), so a prompt reaches the text encoder as it did in LlamaGen's training and sampling. Torch-free.
//
// Ported step by step on Unicode code points; what is not reproduced is listed in docs/real-models.md:
// ftfy.fix_text is reduced to what it does to intact text (line breaks, control characters, curly quotes; no
// mojibake repair), html.unescape and BeautifulSoup know the common named entities and numeric references,
// and lower-casing and the \w, \d, \s classes follow glibc's C.UTF-8 tables rather than Python's.
#pragma once

#include <string>

namespace speculum {

// One pass of clean_caption over UTF-8 text (invalid bytes read as U+FFFD).
std::string clean_caption_once(const std::string& caption);

// What T5Embedder.text_preprocessing does with use_text_preprocessing = True: clean_caption twice.
std::string llamagen_clean_caption(const std::string& caption);

}  // namespace speculum
