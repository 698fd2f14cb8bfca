/**
 * The compile queue: jobs take turns by owner (a template's facility), so a pile of slow layouts
 * from one owner delays another owner's job by one job at a time, not by the whole pile.
 */

/** One owner's waiting compiles and the round its next compile belongs to. */
interface Turns<Job> {
  waiting: Job[]
  round: number
}

/**
 * Round-robin over owners: each owner's compiles are numbered in rounds, the next compile is the
 * oldest of the owner in the lowest round, ties in the order owners came. An owner that arrives
 * joins the round in progress, so it goes next however many compiles others have had; but an
 * owner served in this round keeps its later round while it has nothing waiting, so sending its
 * next compile right after each one cannot put it ahead of an owner that has been waiting.
 */
export function createFairQueue<Job>() {
  const owners = new Map<string, Turns<Job>>()
  let round = 0
  let size = 0
  return {
    get size() {
      return size
    },
    push(owner: string, job: Job): void {
      let turns = owners.get(owner)
      if (!turns) {
        turns = { waiting: [], round }
        owners.set(owner, turns)
      }
      turns.round = Math.max(turns.round, round)
      turns.waiting.push(job)
      size++
    },
    shift(): Job | undefined {
      let next: Turns<Job> | undefined
      for (const turns of owners.values())
        if (turns.waiting.length > 0 && (!next || turns.round < next.round)) next = turns
      const job = next?.waiting.shift()
      if (!next || !job) return undefined
      round = next.round
      next.round++
      size--
      return job
    },
    /**
     * The running compile ended: an owner with nothing waiting is forgotten once the round has
     * caught up with its own (it would join at the round in progress anyway); until then it is
     * kept, with the round it has earned.
     */
    finished(): void {
      for (const [owner, turns] of owners) if (turns.waiting.length === 0 && turns.round <= round) owners.delete(owner)
    },
    /** Jobs of `owner` waiting now. */
    waitingOf(owner: string): number {
      return owners.get(owner)?.waiting.length ?? 0
    },
    /** Takes a waiting job out of the queue (its caller gave up); false when it is not waiting. */
    remove(owner: string, job: Job): boolean {
      const turns = owners.get(owner)
      const at = turns?.waiting.indexOf(job) ?? -1
      if (!turns || at < 0) return false
      turns.waiting.splice(at, 1)
      size--
      return true
    },
    splice(): Job[] {
      const all = [...owners.values()].flatMap((turns) => turns.waiting)
      owners.clear()
      size = 0
      return all
    },
  }
}
