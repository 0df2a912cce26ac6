import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError } from './api/client.ts';
import { sessionQuery } from './api/endpoints.ts';
import { buildRouter } from './router.tsx';
import './styles.css';

const queryClient = new QueryClient({
  queryCache: new QueryCache({
    // a 401 from any call means the session is gone: forget it, and the shell sends the person to sign in
    onError: (err) => {
      if (err instanceof ApiError && err.status === 401)
        queryClient.setQueryData(sessionQuery.queryKey, null);
    },
  }),
  defaultOptions: {
    queries: {
      staleTime: 10_000,
      // a 4xx will not change by asking again
      retry: (count, err) => !(err instanceof ApiError && err.status >= 400 && err.status < 500) && count < 2,
    },
  },
});

const router = buildRouter(queryClient);

const root = document.getElementById('root');
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </StrictMode>,
  );
}
