// The translation unit that builds the plugins' shared precompiled header (source_prelude.h) with
// their compile options (hidden visibility, position-independent code); it defines nothing.
#include "source_prelude.h"
