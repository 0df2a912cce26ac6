import { useMutation, useQueryClient } from '@tanstack/react-query';
import { auth, sessionQuery } from './api/endpoints.ts';

/** Signs out: the server ends the session; this browser forgets it and everything it loaded, whatever the answer. */
export function useSignOut(after: () => unknown) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => auth.signOut(),
    onSettled: async () => {
      queryClient.setQueryData(sessionQuery.queryKey, null);
      queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== sessionQuery.queryKey[0] });
      await after();
    },
  });
}
