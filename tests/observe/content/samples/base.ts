import type { Item } from "./item";

export interface Priced {
  price: number;
  name: string;
}

export type Id = string | number;

enum Color { Red, Green }

export abstract class Base<T> implements Priced {
  price = 0;
  name = "";
  abstract describe(): string;
  protected total(items: T[]): number {
    let t = 0;
    for (const i of items) t += 1;
    return t;
  }
}

export function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

namespace Util {
  export function id<T>(x: T): T {
    return x;
  }
}
