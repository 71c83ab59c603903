import { readFile } from "node:fs/promises";
import path from "node:path";

export const VERSION = "1.2.3";

export function parseArgs(argv) {
  const out = {};
  for (const a of argv) {
    out[a] = true;
  }
  return out;
}

const handler = async (req, res) => {
  res.end("ok");
  return 1;
};

class Cart {
  items = [];
  constructor(owner) {
    this.owner = owner;
    this.items = [];
  }
  add(item) {
    this.items.push(item);
    return this;
  }
  get total() {
    return this.items.reduce((s, i) => s + i.price, 0);
  }
}

export default Cart;
