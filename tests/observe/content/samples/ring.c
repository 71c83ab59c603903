#include <stdio.h>
#include <stdlib.h>

#define CAP 16

typedef struct ring {
    int head;
    int tail;
    int buf[CAP];
} ring_t;

static int ring_full(const ring_t *r);

int ring_push(ring_t *r, int v)
{
    if (ring_full(r))
        return -1;
    r->buf[r->head] = v;
    r->head = (r->head + 1) % CAP;
    return 0;
}

static int ring_full(const ring_t *r) {
    return (r->head + 1) % CAP == r->tail;
}
