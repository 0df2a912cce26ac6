/**
 * Each address's first line in an import's file, kept compactly so that a million rows take tens
 * of megabytes rather than a JavaScript Map's hundreds (issue 48: memory bounded): an open-addressing
 * table of typed arrays (each slot a 32-bit hash, where the address is kept and its line) and the
 * addresses themselves as UTF-8 bytes in 1 MiB pieces. A hash match is confirmed by comparing the
 * bytes, so two different addresses are never taken for one.
 */

const PIECE = 1 << 20;

/** FNV-1a over the string's UTF-16 code units. */
function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class FirstLines {
  private hashes: Uint32Array;
  /** where the address is kept, plus one (0: an empty slot): piece * PIECE + offset */
  private refs: Uint32Array;
  private lines: Uint32Array;
  private mask: number;
  private size = 0;
  private readonly pieces: Buffer[] = [];
  private used = PIECE;
  private scratch = Buffer.alloc(1024);

  constructor(capacity = 1 << 14) {
    this.hashes = new Uint32Array(capacity);
    this.refs = new Uint32Array(capacity);
    this.lines = new Uint32Array(capacity);
    this.mask = capacity - 1;
  }

  /** The line this address was first seen on; when it is new, undefined, and it is kept with this line. */
  firstOrAdd(address: string, line: number): number | undefined {
    const hash = hashOf(address);
    let slot = hash & this.mask;
    let encoded = -1;
    while (this.refs[slot] !== 0) {
      if (this.hashes[slot] === hash) {
        if (encoded < 0) encoded = this.encode(address);
        if (this.sameBytes(this.refs[slot] - 1, encoded)) return this.lines[slot];
      }
      slot = (slot + 1) & this.mask;
    }
    if (encoded < 0) encoded = this.encode(address);
    this.hashes[slot] = hash;
    this.refs[slot] = this.keep(encoded) + 1;
    this.lines[slot] = line;
    if (++this.size * 2 > this.hashes.length) this.grow();
    return undefined;
  }

  /** The bytes held, for a test of what a million rows take. */
  get bytes(): number {
    return this.hashes.byteLength * 3 + this.pieces.length * PIECE;
  }

  /** The address's UTF-8 bytes into the scratch buffer; their length. */
  private encode(address: string): number {
    if (address.length * 3 > this.scratch.length) this.scratch = Buffer.alloc(address.length * 3);
    return this.scratch.write(address, 0, 'utf8');
  }

  private sameBytes(ref: number, length: number): boolean {
    const piece = this.pieces[Math.floor(ref / PIECE)];
    const at = ref % PIECE;
    if (piece.readUInt16LE(at) !== length) return false;
    return this.scratch.compare(piece, at + 2, at + 2 + length, 0, length) === 0;
  }

  /** Copies the encoded address (length first) into the pieces; where it is. */
  private keep(length: number): number {
    if (this.used + 2 + length > PIECE) {
      this.pieces.push(Buffer.allocUnsafe(PIECE));
      this.used = 0;
    }
    const index = this.pieces.length - 1;
    const piece = this.pieces[index];
    piece.writeUInt16LE(length, this.used);
    this.scratch.copy(piece, this.used + 2, 0, length);
    const ref = index * PIECE + this.used;
    this.used += 2 + length;
    return ref;
  }

  private grow() {
    const { hashes, refs, lines } = this;
    const capacity = hashes.length * 2;
    this.hashes = new Uint32Array(capacity);
    this.refs = new Uint32Array(capacity);
    this.lines = new Uint32Array(capacity);
    this.mask = capacity - 1;
    for (let i = 0; i < hashes.length; i++) {
      if (refs[i] === 0) continue;
      let slot = hashes[i] & this.mask;
      while (this.refs[slot] !== 0) slot = (slot + 1) & this.mask;
      this.hashes[slot] = hashes[i];
      this.refs[slot] = refs[i];
      this.lines[slot] = lines[i];
    }
  }
}
