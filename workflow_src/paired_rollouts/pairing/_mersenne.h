/* CPython's Mersenne Twister seeding (Modules/_randommodule.c): random.Random(n)'s state for a key of one
 * or two 32-bit words. Shared by the two compiled helpers, pairing/_fate_draws.c (a fate's draws) and
 * backoffice/_world_draws.c (a world's); each calls init_constant_part() once when its module loads. */
#ifndef PAIRED_ROLLOUTS_MERSENNE_H
#define PAIRED_ROLLOUTS_MERSENNE_H
#include <stdint.h>
#include <string.h>

#define N 624
#define M 397

static uint32_t genrand_19650218[N]; /* init_genrand(19650218): where every init_by_array starts */

static void init_constant_part(void) {
    genrand_19650218[0] = 19650218U;
    for (int i = 1; i < N; i++) {
        uint32_t prev = genrand_19650218[i - 1];
        genrand_19650218[i] = 1812433253U * (prev ^ (prev >> 30)) + (uint32_t)i;
    }
}

/* init_by_array(key, key_length) of CPython's Modules/_randommodule.c for key_length 1 or 2, from the
 * precomputed start. CPython's two loops walk i = 1..N-1, copy mt[N-1] to mt[0] and take one more step
 * at i = 1 (the first loop N steps, the second N-1); here each is written out that way, the previous
 * word kept in a register and the key word of step t (key[t % key_length] + t % key_length) taken from
 * a two-entry table, so no step branches. */
static void seeded_state(uint32_t *mt, const uint32_t *key, int key_length) {
    memcpy(mt, genrand_19650218, sizeof(genrand_19650218));
    const uint32_t add[2] = {key[0], key_length == 2 ? key[1] + 1U : key[0]};
    uint32_t prev = mt[0];
    for (int i = 1; i < N; i++) { /* steps t = 0..N-2 */
        prev = (mt[i] ^ ((prev ^ (prev >> 30)) * 1664525U)) + add[(i - 1) & 1];
        mt[i] = prev;
    }
    mt[0] = prev;
    prev = (mt[1] ^ ((prev ^ (prev >> 30)) * 1664525U)) + add[1]; /* step t = N-1 (odd), at i = 1 */
    mt[1] = prev;
    for (int i = 2; i < N; i++) {
        prev = (mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941U)) - (uint32_t)i;
        mt[i] = prev;
    }
    mt[0] = prev;
    mt[1] = (mt[1] ^ ((prev ^ (prev >> 30)) * 1566083941U)) - 1U; /* the last step, at i = 1 */
    mt[0] = 0x80000000U;
}

#endif
