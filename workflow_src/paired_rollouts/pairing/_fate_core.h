/* A fate's draws from a freshly seeded random.Random(n), without seeding a whole generator: shared by
 * pairing/_fate_draws.c (the draws for pairing/dice.py) and surrogate/_lean_episode.c (the compiled lean
 * episode's fates). Include after _mersenne.h.
 *
 * Random(n) for a 64-bit n, then u = random() and, when u < p, the draws of the retry index and the
 * detail (rejection sampling on getrandbits) and the random() that picks the type. Only the outputs a
 * fate reads are twisted: output i needs words i, i + 1 and i + 397, none of them rewritten by the
 * twist while i < 227. */
#ifndef PAIRED_ROLLOUTS_FATE_CORE_H
#define PAIRED_ROLLOUTS_FATE_CORE_H
#include "_mersenne.h"

#define LAZY_OUTPUTS (N - M) /* outputs 0..226 read only words the first twist has not rewritten */

/* Output i (i < LAZY_OUTPUTS) of the freshly seeded generator: genrand_uint32's twist and tempering. */
static inline uint32_t output(const uint32_t *mt, int i) {
    uint32_t y = (mt[i] & 0x80000000U) | (mt[i + 1] & 0x7fffffffU);
    y = mt[i + M] ^ (y >> 1) ^ ((y & 1U) ? 0x9908b0dfU : 0U);
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

/* random(): 53 bits from outputs i and i + 1. */
static inline double random_at(const uint32_t *mt, int i) {
    uint32_t a = output(mt, i) >> 5, b = output(mt, i + 1) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* The draws after seeding, on the state of Random(n): 0 when u >= p (no fault), 1 with the retry index,
 * the detail and the type draw set, -1 when the rejection loops would need more outputs than the lazy
 * twist gives (probability below 2**-200: draw with random.Random then). */
static inline int fate_draws_of_state(const uint32_t *mt, double p, uint32_t *retry_index, uint32_t *detail,
                                      double *type_draw) {
    if (random_at(mt, 0) >= p) return 0;
    int i = 2;
    do { /* choice of four: _randbelow(4) is getrandbits(3) until < 4 */
        if (i >= LAZY_OUTPUTS) return -1;
        *retry_index = output(mt, i++) >> 29;
    } while (*retry_index >= 4);
    do { /* randrange(0, 1000000): getrandbits(20) until < 1000000 */
        if (i >= LAZY_OUTPUTS) return -1;
        *detail = output(mt, i++) >> 12;
    } while (*detail >= 1000000);
    if (i + 1 >= LAZY_OUTPUTS) return -1;
    *type_draw = random_at(mt, i);
    return 1;
}

/* CPython keys Random(n) by n's 32-bit words, least significant first, as many as n needs (>= 1). */
static inline int key_of(unsigned long long n, uint32_t *key) {
    key[0] = (uint32_t)n, key[1] = (uint32_t)(n >> 32);
    return key[1] ? 2 : 1;
}

/* The draws of Random(n) for a fault probability p (fate_draws_of_state's results). */
static inline int fate_draws(unsigned long long n, double p, uint32_t *retry_index, uint32_t *detail,
                             double *type_draw) {
    uint32_t key[2], mt[N];
    seeded_state(mt, key, key_of(n, key));
    return fate_draws_of_state(mt, p, retry_index, detail, type_draw);
}

/* seeded_state for FATE_LANES keys at once: each step of init_by_array is a dependent chain (shift, xor,
 * multiply, xor, add), so one key leaves the core waiting; the lanes' chains are independent and run
 * interleaved, the same operations per lane as seeded_state. */
#define FATE_LANES 4
static inline void seeded_states(uint32_t mt[FATE_LANES][N], const uint32_t key[FATE_LANES][2],
                          const int key_length[FATE_LANES]) {
    uint32_t add[FATE_LANES][2], prev[FATE_LANES];
    for (int l = 0; l < FATE_LANES; l++) {
        memcpy(mt[l], genrand_19650218, sizeof(genrand_19650218));
        add[l][0] = key[l][0];
        add[l][1] = key_length[l] == 2 ? key[l][1] + 1U : key[l][0];
        prev[l] = mt[l][0];
    }
    for (int i = 1; i < N; i++)
        for (int l = 0; l < FATE_LANES; l++) {
            prev[l] = (mt[l][i] ^ ((prev[l] ^ (prev[l] >> 30)) * 1664525U)) + add[l][(i - 1) & 1];
            mt[l][i] = prev[l];
        }
    for (int l = 0; l < FATE_LANES; l++) {
        mt[l][0] = prev[l];
        prev[l] = (mt[l][1] ^ ((prev[l] ^ (prev[l] >> 30)) * 1664525U)) + add[l][1];
        mt[l][1] = prev[l];
    }
    for (int i = 2; i < N; i++)
        for (int l = 0; l < FATE_LANES; l++) {
            prev[l] = (mt[l][i] ^ ((prev[l] ^ (prev[l] >> 30)) * 1566083941U)) - (uint32_t)i;
            mt[l][i] = prev[l];
        }
    for (int l = 0; l < FATE_LANES; l++) {
        mt[l][0] = prev[l];
        mt[l][1] = (mt[l][1] ^ ((prev[l] ^ (prev[l] >> 30)) * 1566083941U)) - 1U;
        mt[l][0] = 0x80000000U;
    }
}

#endif
