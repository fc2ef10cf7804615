#pragma once
// The constants of the vectorised softmax's e^x (AVX2 and AVX-512 sets):
// x = n ln2 + r with |r| <= ln2 / 2, e^r by its degree-7 Taylor polynomial
// (relative error below 2^-27). One list, so both sets compute the same
// polynomial in the same order.

namespace bonsai::cpu::exp_polynomial {

inline constexpr float kLog2e = 1.44269504088896341f;
// ln2 split in two, so n * kLn2High is exact for the |n| a softmax meets.
inline constexpr float kLn2High = 0.693145751953125f;
inline constexpr float kLn2Low = 1.428606765330187e-06f;
// 1/k! for k = 7 down to 0, Horner order.
inline constexpr float kTaylor[] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                                    1.0f / 6.0f,    0.5f,          1.0f,          1.0f};

} // namespace bonsai::cpu::exp_polynomial
