#pragma once
// Boost.Beast's HTTP parser and messages, included in one place: GCC 12, at
// -O2 with the sanitizers, reports boost::optional's storage inside Beast's
// parser as maybe-uninitialized (a false positive in code we do not own),
// which -Werror would make fatal wherever the parser is inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
