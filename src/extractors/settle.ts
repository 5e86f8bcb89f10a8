import type { LimitFunction } from 'p-limit';

/**
 * Runs tasks through a p-limit and waits for every one of them to end before returning.
 * On the first failure nothing new starts; what is in flight finishes, then the failure is
 * thrown. (Promise.all would return at once and leave siblings calling the API and
 * writing to the warehouse after the run had ended.)
 */
export async function runAll<T>(limit: LimitFunction, tasks: ReadonlyArray<() => Promise<T>>): Promise<T[]> {
  let failure: { error: unknown } | null = null;
  const settled = await Promise.allSettled(
    tasks.map((task) =>
      limit(async () => {
        if (failure) throw failure.error;
        try {
          return await task();
        } catch (error) {
          // Tasks still queued start, see the failure and end at once (clearQueue would leave
          // their promises pending forever).
          failure ??= { error };
          throw error;
        }
      }),
    ),
  );
  if (failure) throw (failure as { error: unknown }).error;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
